"""Files -> model objects: strict YAML, catalogs, scenarios, Hugging Face configs."""
