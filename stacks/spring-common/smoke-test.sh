#!/usr/bin/env bash
# Smoke test of one running stack against contract/API.md: every endpoint, positive and negative
# cases, plus a concurrent transfer burst that must conserve the sum of balances.
# Not the conformance suite (`ceiling verify` is); a quick check while developing a stack.
#
#   smoke-test.sh BASE_URL PSQL_CONNINFO
#   smoke-test.sh http://127.0.0.1:18081 "host=127.0.0.1 port=55433 dbname=bench user=bench"
#
# Needs curl, psql, and a database loaded with contract/schema.sql + contract/seed.sql (seed=1).
set -u
BASE=${1:?base url}
DB=${2:?psql conninfo}
pass=0
fail=0

sql() { psql "$DB" -XAtq -c "$1"; }
lit() { sed 's/[][{}()*+?.^$|\\]/\\&/g' <<<"$1"; }   # a string as a literal regex

# check NAME EXPECTED_STATUS BODY_REGEX -- curl args...
check() {
  local name=$1 want=$2 re=$3
  shift 4
  local out status body
  out=$(curl -s -o /tmp/smoke.$$ -w '%{http_code} %{content_type}' "$@")
  status=${out%% *}
  body=$(cat /tmp/smoke.$$)
  if [[ $status == "$want" && $body =~ $re ]]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL $name: got $out body=${body:0:300}"
  fi
  if [[ $want != 200 && $want != 201 && $status == "$want" ]]; then
    # Error bodies: {"error":"<code>","message":"..."} as application/json.
    if ! [[ $body =~ ^\{\"error\":\"[a-z_]+\",\"message\":\".*\"\}$ && ${out#* } == application/json* ]]; then
      fail=$((fail + 1))
      echo "FAIL $name: error body/content type not per contract: $out $body"
    fi
  fi
  rm -f /tmp/smoke.$$
}

J=(-H 'Content-Type: application/json')
UUID_RE='[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'
TS_RE='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?Z'

# --- ping (exact bodies)
check ping 200 '^\{"ok":true,"message":"OK"\}$' -- "$BASE/ping"
check time 200 '^\{"serverTime":[0-9]{10}\}$' -- "$BASE/time"
check db-ping 200 "^$(lit "$(sql "SELECT json_build_object('ok', true, 'message', 'OK')::text")")\$" -- "$BASE/db/ping"
check db-time 200 '^\{"serverTime" : [0-9]{10}\}$' -- "$BASE/db/time"
check health 200 '^\{"status":"UP"\}$' -- "$BASE/health"
check metrics 200 'process_cpu_usage' -- "$BASE/metrics"
check metrics-jvm 200 'jvm_memory_used_bytes' -- "$BASE/metrics"

# --- status
ID1=$(sql "SELECT md5('1:status:1')::uuid")
ID2=$(sql "SELECT md5('1:status:2')::uuid")
ROW1=$(sql "SELECT status FROM status WHERE id = '$ID1'")
check status-get 200 "^\{\"id\":\"$ID1\",\"status\":$ROW1,\"updatedAt\":\"2025-01-01T00:00:01Z\"\}\$" -- "$BASE/status/$ID1"
check status-get-upper 200 "\"id\":\"$ID1\"" -- "$BASE/status/${ID1^^}"
check status-get-404 404 '"error":"not_found"' -- "$BASE/status/00000000-0000-0000-0000-000000000000"
check status-get-bad 400 '"error":"bad_request"' -- "$BASE/status/not-a-uuid"
check status-get-short-form 400 'bad_request' -- "$BASE/status/1-1-1-1-1"
check status-get-41hex 400 'bad_request' -- "$BASE/status/${ID1}0"
LOW=$ID1; HIGH=$ID2; [[ $ID2 < $ID1 ]] && { LOW=$ID2; HIGH=$ID1; }
check status-batch 200 "^\[\{\"id\":\"$LOW\",[^]]*\},\{\"id\":\"$HIGH\",[^]]*\}\]\$" -- \
  "$BASE/status?ids=$HIGH,$LOW,00000000-0000-0000-0000-000000000000,$HIGH"
check status-batch-space 200 "^\[\{\"id\":\"$LOW\"" -- "$BASE/status?ids=$HIGH,%20$LOW"
check status-batch-none 200 '^\[\]$' -- "$BASE/status?ids=00000000-0000-0000-0000-000000000000"
check status-batch-empty 400 'bad_request' -- "$BASE/status?ids="
check status-batch-missing 400 'bad_request' -- "$BASE/status"
check status-batch-bad 400 'bad_request' -- "$BASE/status?ids=$ID1,nope"
check status-batch-trailing-comma 400 'bad_request' -- "$BASE/status?ids=$ID1,"
IDS50=$(sql "SELECT string_agg(md5('1:status:' || g)::uuid::text, ',') FROM generate_series(1, 50) g")
IDS51=$(sql "SELECT string_agg(md5('1:status:' || g)::uuid::text, ',') FROM generate_series(1, 51) g")
check status-batch-50 200 "^\[(\{[^}]*\},){49}\{[^}]*\}\]\$" -- "$BASE/status?ids=$IDS50"
check status-batch-51 400 'bad_request' -- "$BASE/status?ids=$IDS51"

NEW=$(sql "SELECT gen_random_uuid()")
check status-post 201 "^\{\"id\":\"$NEW\",\"status\":-32768,\"updatedAt\":\"$TS_RE\"\}\$" -- \
  -X POST "${J[@]}" -d "{\"id\":\"$NEW\",\"status\":-32768}" "$BASE/status"
check status-post-dup 409 '"error":"conflict"' -- -X POST "${J[@]}" -d "{\"id\":\"$NEW\",\"status\":1}" "$BASE/status"
NEW2=$(sql "SELECT gen_random_uuid()")
check status-post-upper 201 "\"id\":\"$NEW2\"" -- -X POST "${J[@]}" -d "{\"id\":\"${NEW2^^}\",\"status\":32767}" "$BASE/status"
check status-post-range 400 'bad_request' -- -X POST "${J[@]}" -d "{\"id\":\"$(sql "SELECT gen_random_uuid()")\",\"status\":32768}" "$BASE/status"
check status-post-range-neg 400 'bad_request' -- -X POST "${J[@]}" -d "{\"id\":\"$(sql "SELECT gen_random_uuid()")\",\"status\":-32769}" "$BASE/status"
check status-post-huge 400 'bad_request' -- -X POST "${J[@]}" -d "{\"id\":\"$(sql "SELECT gen_random_uuid()")\",\"status\":99999999999999999999}" "$BASE/status"
check status-post-string 400 'bad_request' -- -X POST "${J[@]}" -d "{\"id\":\"$(sql "SELECT gen_random_uuid()")\",\"status\":\"5\"}" "$BASE/status"
check status-post-float 400 'bad_request' -- -X POST "${J[@]}" -d "{\"id\":\"$(sql "SELECT gen_random_uuid()")\",\"status\":5.5}" "$BASE/status"
check status-post-bool 400 'bad_request' -- -X POST "${J[@]}" -d "{\"id\":\"$(sql "SELECT gen_random_uuid()")\",\"status\":true}" "$BASE/status"
check status-post-null 400 'bad_request' -- -X POST "${J[@]}" -d "{\"id\":\"$(sql "SELECT gen_random_uuid()")\",\"status\":null}" "$BASE/status"
check status-post-nostatus 400 'bad_request' -- -X POST "${J[@]}" -d "{\"id\":\"$(sql "SELECT gen_random_uuid()")\"}" "$BASE/status"
check status-post-noid 400 'bad_request' -- -X POST "${J[@]}" -d '{"status":1}' "$BASE/status"
check status-post-badid 400 'bad_request' -- -X POST "${J[@]}" -d '{"id":"xyz","status":1}' "$BASE/status"
check status-post-numid 400 'bad_request' -- -X POST "${J[@]}" -d '{"id":123,"status":1}' "$BASE/status"
check status-post-b64id 400 'bad_request' -- -X POST "${J[@]}" -d '{"id":"AAAAAAAAAAAAAAAAAAAAAA==","status":1}' "$BASE/status"
check status-post-malformed 400 'bad_request' -- -X POST "${J[@]}" -d '{"id":' "$BASE/status"
check status-post-trailing 400 'bad_request' -- -X POST "${J[@]}" -d "{\"id\":\"$(sql "SELECT gen_random_uuid()")\",\"status\":1} x" "$BASE/status"
check status-post-array 400 'bad_request' -- -X POST "${J[@]}" -d '[1,2]' "$BASE/status"
check status-post-empty 400 'bad_request' -- -X POST "${J[@]}" --data-binary '' "$BASE/status"
check status-post-jsonnull 400 'bad_request' -- -X POST "${J[@]}" -d 'null' "$BASE/status"
check status-post-text 415 '"error":"unsupported_media_type"' -- -X POST -H 'Content-Type: text/plain' -d '{"id":"x","status":1}' "$BASE/status"
check status-post-form 415 'unsupported_media_type' -- -X POST -d "{\"id\":\"$NEW\",\"status\":1}" "$BASE/status"
check status-post-noctype 415 'unsupported_media_type' -- -X POST -H 'Content-Type:' --data-binary "{\"id\":\"$NEW\",\"status\":1}" "$BASE/status"
check status-post-charset 409 'conflict' -- -X POST -H 'Content-Type: application/json; charset=utf-8' -d "{\"id\":\"$NEW\",\"status\":1}" "$BASE/status"
BIG=$(head -c 70000 /dev/zero | tr '\0' ' ')
printf '{"id":"%s","status":1,"pad":"%s"}' "$(sql "SELECT gen_random_uuid()")" "$BIG" > /tmp/smoke-big.$$
check status-post-413 413 '"error":"payload_too_large"' -- -X POST "${J[@]}" --data-binary @/tmp/smoke-big.$$ "$BASE/status"
check status-post-413-chunked 413 'payload_too_large' -- -X POST "${J[@]}" -H 'Transfer-Encoding: chunked' --data-binary @/tmp/smoke-big.$$ "$BASE/status"
rm -f /tmp/smoke-big.$$
NEW3=$(sql "SELECT gen_random_uuid()")
check status-post-chunked-small 201 "\"id\":\"$NEW3\"" -- -X POST "${J[@]}" -H 'Transfer-Encoding: chunked' -d "{\"id\":\"$NEW3\",\"status\":3}" "$BASE/status"

BEFORE=$(sql "SELECT to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS') FROM status WHERE id = '$ID2'")
check status-put 200 "^\{\"id\":\"$ID2\",\"status\":7,\"updatedAt\":\"$TS_RE\"\}\$" -- -X PUT "${J[@]}" -d '{"status":7}' "$BASE/status/$ID2"
AFTER=$(sql "SELECT status || ' ' || (updated_at > '$BEFORE+00') FROM status WHERE id = '$ID2'")
[[ $AFTER == "7 true" ]] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL status-put-stored: $AFTER"; }
check status-put-404 404 'not_found' -- -X PUT "${J[@]}" -d '{"status":7}' "$BASE/status/00000000-0000-0000-0000-000000000000"
check status-put-baduuid 400 'bad_request' -- -X PUT "${J[@]}" -d '{"status":7}' "$BASE/status/zzz"
check status-put-range 400 'bad_request' -- -X PUT "${J[@]}" -d '{"status":70000}' "$BASE/status/$ID2"
check status-put-missing 400 'bad_request' -- -X PUT "${J[@]}" -d '{}' "$BASE/status/$ID2"
check status-put-text 415 'unsupported_media_type' -- -X PUT -H 'Content-Type: text/plain' -d '{"status":7}' "$BASE/status/$ID2"

# --- bank
check client-create 201 '^\{"id":[0-9]+,"balance":100\}$' -- -X POST "${J[@]}" -d '{"balance":100}' "$BASE/clients"
check client-create-max 201 '"balance":4611686018427387904\}$' -- -X POST "${J[@]}" -d '{"balance":4611686018427387904}' "$BASE/clients"
check client-create-over 400 'bad_request' -- -X POST "${J[@]}" -d '{"balance":4611686018427387905}' "$BASE/clients"
check client-create-neg 400 'bad_request' -- -X POST "${J[@]}" -d '{"balance":-1}' "$BASE/clients"
check client-create-missing 400 'bad_request' -- -X POST "${J[@]}" -d '{}' "$BASE/clients"
check client-create-string 400 'bad_request' -- -X POST "${J[@]}" -d '{"balance":"10"}' "$BASE/clients"
check client-balance 200 '^\{"id":1,"balance":[0-9]+\}$' -- "$BASE/clients/1/balance"
check client-balance-404 404 'not_found' -- "$BASE/clients/999999999/balance"
check client-balance-bad 400 'bad_request' -- "$BASE/clients/abc/balance"
check client-balance-neg 400 'bad_request' -- "$BASE/clients/-1/balance"
check client-balance-huge 400 'bad_request' -- "$BASE/clients/99999999999999999999/balance"

A=$(curl -s -X POST "${J[@]}" -d '{"balance":50}' "$BASE/clients" | sed 's/.*"id":\([0-9]*\).*/\1/')
B=$(curl -s -X POST "${J[@]}" -d '{"balance":0}' "$BASE/clients" | sed 's/.*"id":\([0-9]*\).*/\1/')
check transfer 200 "^\{\"from\":$A,\"to\":$B,\"amount\":20\}\$" -- -X POST "${J[@]}" -d "{\"from\":$A,\"to\":$B,\"amount\":20}" "$BASE/transfers"
check transfer-balance 200 "^\{\"id\":$B,\"balance\":20\}\$" -- "$BASE/clients/$B/balance"
check transfer-back 200 "\"from\":$B" -- -X POST "${J[@]}" -d "{\"from\":$B,\"to\":$A,\"amount\":20}" "$BASE/transfers"
check transfer-409 409 '"error":"conflict"' -- -X POST "${J[@]}" -d "{\"from\":$A,\"to\":$B,\"amount\":51}" "$BASE/transfers"
check transfer-409-unchanged 200 "^\{\"id\":$A,\"balance\":50\}\$" -- "$BASE/clients/$A/balance"
check transfer-404 404 'not_found' -- -X POST "${J[@]}" -d "{\"from\":$A,\"to\":999999999,\"amount\":1}" "$BASE/transfers"
check transfer-404-from 404 'not_found' -- -X POST "${J[@]}" -d "{\"from\":999999999,\"to\":$A,\"amount\":1}" "$BASE/transfers"
check transfer-zero 400 'bad_request' -- -X POST "${J[@]}" -d "{\"from\":$A,\"to\":$B,\"amount\":0}" "$BASE/transfers"
check transfer-neg 400 'bad_request' -- -X POST "${J[@]}" -d "{\"from\":$A,\"to\":$B,\"amount\":-5}" "$BASE/transfers"
check transfer-self 400 'bad_request' -- -X POST "${J[@]}" -d "{\"from\":$A,\"to\":$A,\"amount\":1}" "$BASE/transfers"
check transfer-missing 400 'bad_request' -- -X POST "${J[@]}" -d "{\"from\":$A,\"amount\":1}" "$BASE/transfers"
check transfer-type 400 'bad_request' -- -X POST "${J[@]}" -d "{\"from\":\"$A\",\"to\":$B,\"amount\":1}" "$BASE/transfers"
check transfer-text 415 'unsupported_media_type' -- -X POST -H 'Content-Type: text/plain' -d "{\"from\":$A,\"to\":$B,\"amount\":1}" "$BASE/transfers"

# --- rows
check orders-default 200 "^\[(\{[^}]*\},){9}\{[^}]*\}\]\$" -- "$BASE/orders"
FIRST=$(sql "SELECT json_build_object('id', id, 'customer', customer, 'item', item, 'quantity', quantity, 'priceCents', price_cents)::text FROM orders ORDER BY id LIMIT 1" | tr -d ' ')
check orders-1 200 "^$(lit "[${FIRST%\}},\"createdAt\":\"2025-01-01T00:01:00Z\"}]")\$" -- "$BASE/orders?limit=1"
check orders-100 200 "^\[(\{[^}]*\},){99}\{[^}]*\}\]\$" -- "$BASE/orders?limit=100"
check orders-1000 200 "^\[(\{[^}]*\},){999}\{[^}]*\}\]\$" -- "$BASE/orders?limit=1000"
check orders-0 400 'bad_request' -- "$BASE/orders?limit=0"
check orders-1001 400 'bad_request' -- "$BASE/orders?limit=1001"
check orders-neg 400 'bad_request' -- "$BASE/orders?limit=-1"
check orders-abc 400 'bad_request' -- "$BASE/orders?limit=abc"
check orders-empty 400 'bad_request' -- "$BASE/orders?limit="

# --- unknown route / method
check route-404 404 'not_found' -- "$BASE/nope"
check method-405 405 'method_not_allowed' -- -X DELETE "$BASE/status/$ID1"

# --- concurrent transfer burst: the sum of balances is conserved, every answer is 200 or 409
SUM0=$(sql "SELECT sum(balance) FROM clients")
T0=$(sql "SELECT count(*) FROM transfers")
codes=$(for i in $(seq 1 400); do
  f=$((RANDOM % 10 + 1)); t=$((RANDOM % 10 + 1)); [[ $f == "$t" ]] && t=$((f % 10 + 1))
  echo "{\"from\":$f,\"to\":$t,\"amount\":$((RANDOM % 400000 + 1))}"
done | xargs -d '\n' -P 32 -I{} curl -s -o /dev/null -w '%{http_code}\n' -X POST -H 'Content-Type: application/json' -d {} "$BASE/transfers" | sort | uniq -c | tr '\n' ' ')
SUM1=$(sql "SELECT sum(balance) FROM clients")
T1=$(sql "SELECT count(*) FROM transfers")
OK=$(grep -o '[0-9]* 200' <<<"$codes" | cut -d' ' -f1)
if [[ $SUM0 == "$SUM1" && $codes =~ ^\ *[0-9]+\ 200(\ +[0-9]+\ 409)?\ *$ && $((T1 - T0)) == "${OK:-0}" ]]; then
  pass=$((pass + 1))
else
  fail=$((fail + 1))
  echo "FAIL transfer-burst: sum $SUM0 -> $SUM1, codes: $codes, transfers rows +$((T1 - T0))"
fi
echo "transfer burst: $codes(sum of balances $SUM0 -> $SUM1, +$((T1 - T0)) transfer rows)"

echo "$pass passed, $fail failed"
[[ $fail == 0 ]]
