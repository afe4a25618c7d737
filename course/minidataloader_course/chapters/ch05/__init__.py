"""Chapter 5: its checks, solution, demos and milestone."""
