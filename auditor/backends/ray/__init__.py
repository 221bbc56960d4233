"""``--ray``: a run's generation on Ray actors (:mod:`.cluster`), their placement and the address checks
(:mod:`.placement`), and the actor itself (:mod:`.worker`)."""
