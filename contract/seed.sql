-- Deterministic seed data. The stand runs this with psql variable :seed (an integer, default 1):
--   psql -v seed=1 -f contract/seed.sql
-- Same seed => byte-identical rows, so runs can be repeated and compared. Ids are derived from
-- md5(seed, n) instead of gen_random_uuid() so they are reproducible; the value distribution is
-- source 000's: (random()*10)::int2 rounds, so 1..9 each come 10% of the time and 0 and 10 5%
-- (before 2026-11-23 this file used 0..10 uniformly).

-- psql has no default for a variable: give :seed its documented default of 1.
\if :{?seed}
\else
  \set seed 1
\endif

truncate status, transfers, clients, client_openings, orders restart identity;

-- status: 1,000,000 rows (source 000)
insert into status (id, status, updated_at)
select md5(:'seed' || ':status:' || g)::uuid,
       -- source 000's (random()*10)::int2 rounds a uniform 0…10: 0 and 10 half as frequent
       round((('x' || substr(md5(:'seed' || ':s:' || g), 1, 8))::bit(32)::bigint % 1000000)
             / 100000.0)::int2,
       timestamptz '2025-01-01 00:00:00+00' + (g * interval '1 second')
from generate_series(1, 1000000) g;

-- bank: 10,000 clients with an opening balance of 1,000,000 cents each
insert into clients (balance)
select 1000000 from generate_series(1, 10000);
update client_openings set seeded = true;   -- the audit's trigger recorded their openings

-- orders: 10,000 rows
insert into orders (id, customer, item, quantity, price_cents, created_at)
select g,
       'customer-' || (g % 997),
       'item-' || (g % 101),
       1 + (g % 9),
       100 + (('x' || substr(md5(:'seed' || ':o:' || g), 1, 8))::bit(32)::bigint % 100000),
       timestamptz '2025-01-01 00:00:00+00' + (g * interval '1 minute')
from generate_series(1, 10000) g;

analyze;
