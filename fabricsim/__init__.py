"""fabricsim: flow-level fabric simulator (ECMP, SGLB, spraying) and GPU-hours model of failover."""
