"""Chapter 15: an open capstone, your loader on recordings of varying length."""
