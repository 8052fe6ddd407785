"""Results for people: formatted tables (:mod:`.tables`), the notebooks' sections
(:mod:`.sections`) and the HTML report of a study (:mod:`.html`)."""
