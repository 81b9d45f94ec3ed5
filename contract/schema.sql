-- The benchmark database: one schema for all four workloads of the ceiling benchmark API.
-- Every stack and the stand use exactly this file; nothing else creates tables.
-- Source 000's `status` table is kept verbatim (uuid PK, smallint, timestamptz + index on updated_at).

create extension if not exists pg_stat_statements;

-- status workload (source 000)
create table if not exists status (
  id         uuid primary key,
  status     smallint not null,
  updated_at timestamptz not null default now()
);
create index if not exists status_updated_at_idx on status(updated_at);

-- bank workload (source 001, made sound: a pool, an index, atomic transfers, a conserved sum)
create table if not exists clients (
  id      bigserial primary key,
  balance bigint not null check (balance >= 0)
);
create table if not exists transfers (
  id         bigserial primary key,
  from_id    bigint not null references clients(id),
  to_id      bigint not null references clients(id),
  amount     bigint not null check (amount > 0),
  created_at timestamptz not null default now()
);

-- ceiling's audit, not a stack's work: each client's opening balance, recorded by a trigger (so
-- every stack is audited alike, whatever its SQL). After a run the stand checks that money was
-- conserved: every balance = its opening + transfers in − transfers out, none negative, and the
-- sum of balances = the sum of openings. The trigger runs once per created client.
create table if not exists client_openings (
  id      bigint primary key,
  balance bigint not null,
  seeded  boolean not null default false   -- set by seed.sql for the clients it creates
);
create or replace function ceiling_record_opening() returns trigger language plpgsql as $$
begin
  insert into client_openings (id, balance) values (new.id, new.balance);
  return null;
end
$$;
create or replace trigger ceiling_client_opening after insert on clients
  for each row execute function ceiling_record_opening();

-- rows workload (sources 002 `/orders` and 003 `/people`): a read of N rows as JSON
create table if not exists orders (
  id          bigint primary key,
  customer    text not null,
  item        text not null,
  quantity    integer not null,
  price_cents bigint not null,
  created_at  timestamptz not null
);

-- ping workload (source 004) needs no table.
