"""The network: KV moved over the long-haul line (TCP, connection pool, flow sharing,
streaming during prefill, finite benchmark runs) and over RDMA inside a datacenter."""
