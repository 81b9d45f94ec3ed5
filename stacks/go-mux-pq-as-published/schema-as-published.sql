-- Source 001's schema flaw on this stack's copy of the data (the brief: "no indexes (balance scans a
-- growing table)"; the issue: "no index on the balance lookup"). The contract's schema gives
-- clients a primary key, so the balance read, the transfer's checks and both of its updates find
-- a client by index; here they scan the clients table, which grows by every created client. The
-- transfers' foreign keys depend on that key and go with it (the source's text shows none).
-- Ids stay unique (bigserial); ceiling's audit table (client_openings) keeps its own key, so the
-- books are still checked after the run. Applied by the stand on every fresh copy before this
-- stack starts (stack.toml [database]); no other stack sees it.
alter table transfers
  drop constraint if exists transfers_from_id_fkey,
  drop constraint if exists transfers_to_id_fkey;
alter table clients drop constraint clients_pkey;
analyze clients;
