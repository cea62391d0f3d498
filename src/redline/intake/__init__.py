"""Cases from production: logged exchanges and tables turned into case files."""
