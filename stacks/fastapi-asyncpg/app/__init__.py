"""ceiling's FastAPI reference stack: the benchmark API (contract/API.md) on asyncpg."""
