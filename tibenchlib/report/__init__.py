"""Results for people: formatted tables (:mod:`.tables`) and the notebooks' sections
(:mod:`.sections`)."""
