-- Source 001's schema flaw (the brief: "no indexes (balance scans a growing table)"; the issue:
-- "no index on the balance lookup"), applied by the stand to this stack's copy of the data only
-- (stack.toml [database]); the same statements as ../go-mux-pq-as-published/schema-as-published.sql,
-- whose comment explains them. The stand accepts only a file inside the stack's own folder.
alter table transfers
  drop constraint if exists transfers_from_id_fkey,
  drop constraint if exists transfers_to_id_fkey;
alter table clients drop constraint clients_pkey;
analyze clients;
