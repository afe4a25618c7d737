"""Chapter 7: its checks, solution, demos and milestone."""
