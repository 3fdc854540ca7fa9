"""TRL engine: the GRPOTrainer subclass, held-out curve evaluation, tool rewards, the run watch, DAPO refill.
The only place (with engines/verl) that imports its engine."""
