"""Chapter 4: its checks, solution, demos."""
