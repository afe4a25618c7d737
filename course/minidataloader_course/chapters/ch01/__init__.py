"""Chapter 1: its checks, solution, demos."""
