"""Chapter 3: its checks, solution, demos."""
