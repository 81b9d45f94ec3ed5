//! The embedded stand: PostgreSQL, reference stacks under cgroup limits, resource sampling
