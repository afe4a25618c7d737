"""Chapter 2: its checks, solution, demos."""
