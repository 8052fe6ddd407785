"""Reports for people: tables, the HTML study report."""
