"""Deploying a plan: the files that run it on a serving platform (`pdd-plan deploy`)."""
