"""Chapter 13: its checks, solution, demos and milestone."""
