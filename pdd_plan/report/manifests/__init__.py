"""Deployment files for a plan (`pdd-plan deploy`): per datacenter, the manifests of one
target (NVIDIA Dynamo, llm-d, plain Kubernetes) that run the plan's instances with their
GPU counts, parallelism and engine flags, and the router's policy as a ConfigMap. Each
document is checked against the target's vendored schema (schemas/, SOURCES.md says
where each comes from) before a byte is written; what a target cannot express is said in
the file and returned to the command, never dropped."""
