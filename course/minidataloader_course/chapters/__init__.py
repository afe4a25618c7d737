"""Model solutions, one module per chapter: the single source the book shows (by
``literalinclude``) and the workbook tests inject. Plain code a reader could have written."""
