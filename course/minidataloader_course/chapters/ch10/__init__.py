"""Chapter 10: its checks, solution, demos and milestone."""
