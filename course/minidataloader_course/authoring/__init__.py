"""Tools for the book's authors (run in a clone): the workbooks and the tables made from the chapters."""
