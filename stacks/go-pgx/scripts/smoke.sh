#!/usr/bin/env bash
# Smoke test of a running stack against a freshly seeded database: every endpoint, positive and
# negative cases, status codes and bodies. Usage: scripts/smoke.sh [base-url]
# Not stack-specific: it only speaks the contract (contract/API.md).
set -u
B=${1:-http://127.0.0.1:${HTTP_PORT:-8080}}
pass=0 fail=0
J='Content-Type: application/json'

# check EXPECTED_CODE METHOD PATH [BODY [CONTENT-TYPE]] [-- grep-pattern]
check() {
  local want=$1 method=$2 path=$3 body=${4-} ctype=${5-$J} pattern=${6-}
  local args=(-s -g -o /tmp/smoke.body -w '%{http_code} %{content_type}' -X "$method")
  if [[ -n $body ]]; then
    if [[ $body == @* ]]; then args+=(--data-binary "$body"); else args+=(--data-raw "$body"); fi
    [[ -n $ctype ]] && args+=(-H "$ctype")
  fi
  local got ct
  read -r got ct < <(curl "${args[@]}" "$B$path")
  local ok=1
  [[ $got == "$want" ]] || ok=0
  [[ $path == /metrics || $ct == application/json* ]] || ok=0
  if [[ $got -ge 400 && $path != /health ]] && ! grep -q '"error":"[a-z_]*","message":' /tmp/smoke.body; then ok=0; fi
  if [[ -n $pattern ]] && ! grep -Eq -- "$pattern" /tmp/smoke.body; then ok=0; fi
  if ((ok)); then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL $method $path: want $want got $got ($ct) $(head -c 300 /tmp/smoke.body)"
  fi
}

U1=000016a5-3c0e-4307-4168-ff8fc74bd819   # seed 1 rows
U2=00004f80-cea9-eade-5b26-64cd024c61ba
NEW=$(cat /proc/sys/kernel/random/uuid)
TS='"updatedAt":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?Z"'

# operations
check 200 GET /health '' '' '^\{"status":"UP"\}$'
check 200 GET /metrics '' '' 'process_resident_memory_bytes'
check 200 GET /metrics '' '' 'go_goroutines'
# ping
check 200 GET /ping '' '' '^\{"ok":true,"message":"OK"\}$'
check 200 GET /time '' '' '^\{"serverTime":[0-9]+\}$'
check 200 GET /db/ping '' '' '^\{"ok" : true, "message" : "OK"\}$'
check 200 GET /db/time '' '' '^\{"serverTime" : [0-9]+\}$'
# status: reads
check 200 GET /status/$U1 '' '' "^\\{\"id\":\"$U1\",\"status\":[0-9]+,$TS\\}$"
check 200 GET /status/${U1^^} '' '' "\"id\":\"$U1\""
check 404 GET /status/11111111-1111-1111-1111-111111111111 '' '' '"error":"not_found"'
check 400 GET /status/not-a-uuid '' '' '"error":"bad_request"'
check 400 GET /status/000016a53c0e43074168ff8fc74bd819
check 400 GET /status/{$U1}
check 400 GET /status/${U1}0
check 400 GET /status/g00016a5-3c0e-4307-4168-ff8fc74bd819
check 200 GET "/status?ids=$U2,$U1,${U1^^},11111111-1111-1111-1111-111111111111" '' '' "^\\[\\{\"id\":\"$U1\".*\\},\\{\"id\":\"$U2\".*\\}\\]$"
check 200 GET "/status?ids=11111111-1111-1111-1111-111111111111" '' '' '^\[\]$'
check 400 GET "/status"
check 400 GET "/status?ids="
check 400 GET "/status?ids=$U1,"
check 400 GET "/status?ids=$U1,nope"
ids50=$(printf "$U1,%.0s" $(seq 50)); ids51=$(printf "$U1,%.0s" $(seq 51))
check 200 GET "/status?ids=${ids50%,}"
check 400 GET "/status?ids=${ids51%,}"
# status: writes
check 201 POST /status "{\"id\":\"${NEW^^}\",\"status\":7}" "$J" "^\\{\"id\":\"$NEW\",\"status\":7,$TS\\}$"
check 409 POST /status "{\"id\":\"$NEW\",\"status\":7}" "$J" '"error":"conflict"'
check 201 POST /status "{\"id\":\"$(cat /proc/sys/kernel/random/uuid)\",\"status\":-32768,\"extra\":1}" "$J"
check 201 POST /status "{\"id\":\"$(cat /proc/sys/kernel/random/uuid)\",\"status\":32767}" 'Content-Type: application/json; charset=utf-8'
check 400 POST /status "{\"id\":\"$(cat /proc/sys/kernel/random/uuid)\",\"status\":32768}"
check 400 POST /status "{\"id\":\"$(cat /proc/sys/kernel/random/uuid)\",\"status\":-32769}"
check 400 POST /status "{\"id\":\"$(cat /proc/sys/kernel/random/uuid)\",\"status\":1.5}"
check 400 POST /status "{\"id\":\"$(cat /proc/sys/kernel/random/uuid)\",\"status\":\"1\"}"
check 400 POST /status "{\"id\":\"$(cat /proc/sys/kernel/random/uuid)\",\"status\":99999999999999999999999}"
check 400 POST /status "{\"id\":\"$(cat /proc/sys/kernel/random/uuid)\"}"
check 400 POST /status "{\"id\":\"$(cat /proc/sys/kernel/random/uuid)\",\"status\":null}"
check 400 POST /status '{"status":1}'
check 400 POST /status '{"id":"nope","status":1}'
check 400 POST /status '{"id":5,"status":1}'
check 400 POST /status '{"id":"'$NEW'","status":1'
check 400 POST /status '[1,2]'
check 400 POST /status 'null'
check 400 POST /status "{\"id\":\"$NEW\",\"status\":1} trailing"
check 415 POST /status "{\"id\":\"$NEW\",\"status\":1}" 'Content-Type: text/plain' '"error":"unsupported_media_type"'
check 415 POST /status "{\"id\":\"$NEW\",\"status\":1}" 'Content-Type: application/x-www-form-urlencoded'
check 415 POST /status "{\"id\":\"$NEW\",\"status\":1}" 'X-No-Content-Type: 1'
head -c 70000 /dev/zero | tr '\0' ' ' > /tmp/smoke.big; echo '{"id":"'$NEW'","status":1}' >> /tmp/smoke.big
check 413 POST /status @/tmp/smoke.big "$J" '"error":"payload_too_large"'
check 200 PUT /status/$NEW '{"status":-5}' "$J" "^\\{\"id\":\"$NEW\",\"status\":-5,$TS\\}$"
check 404 PUT /status/11111111-1111-1111-1111-111111111111 '{"status":1}' "$J" '"error":"not_found"'
check 400 PUT /status/nope '{"status":1}'
check 400 PUT /status/$NEW '{"status":40000}'
check 400 PUT /status/$NEW '{}'
check 400 PUT /status/$NEW '{"status":true}'
check 415 PUT /status/$NEW '{"status":1}' 'Content-Type: text/json'
check 413 PUT /status/$NEW @/tmp/smoke.big
# bank
check 201 POST /clients '{"balance":500}' "$J" '^\{"id":[0-9]+,"balance":500\}$'
check 201 POST /clients '{"balance":0}'
check 201 POST /clients '{"balance":4611686018427387904}'
check 400 POST /clients '{"balance":4611686018427387905}'
check 400 POST /clients '{"balance":-1}'
check 400 POST /clients '{"balance":"5"}'
check 400 POST /clients '{}'
check 400 POST /clients '{"balance":'
check 415 POST /clients '{"balance":1}' 'Content-Type: text/plain'
check 200 GET /clients/1/balance '' '' '^\{"id":1,"balance":[0-9]+\}$'
check 404 GET /clients/999999999/balance '' '' '"error":"not_found"'
check 400 GET /clients/abc/balance
check 400 GET /clients/1.5/balance
check 400 GET /clients/99999999999999999999/balance
check 200 POST /transfers '{"from":1,"to":2,"amount":100}' "$J" '^\{"from":1,"to":2,"amount":100\}$'
check 200 POST /transfers '{"from":2,"to":1,"amount":100}'
check 409 POST /transfers '{"from":3,"to":4,"amount":1000000000}' "$J" '"error":"conflict"'
check 404 POST /transfers '{"from":1,"to":999999999,"amount":1}' "$J" '"error":"not_found"'
check 404 POST /transfers '{"from":999999999,"to":1,"amount":1}'
check 400 POST /transfers '{"from":1,"to":1,"amount":1}'
check 400 POST /transfers '{"from":1,"to":2,"amount":0}'
check 400 POST /transfers '{"from":1,"to":2,"amount":-5}'
check 400 POST /transfers '{"from":1,"to":2}'
check 400 POST /transfers '{"from":"1","to":2,"amount":1}'
check 400 POST /transfers '{"from":1,"to":2,"amount":1.5}'
check 400 POST /transfers 'not json'
check 415 POST /transfers '{"from":1,"to":2,"amount":1}' 'Content-Type: text/plain'
check 413 POST /transfers @/tmp/smoke.big
# rows
check 200 GET /orders '' '' '^\[\{"id":1,"customer":"customer-1","item":"item-1","quantity":2,"priceCents":[0-9]+,"createdAt":"2025-01-01T00:01:00Z"\}'
[[ $(curl -s "$B/orders" | grep -o '"id":' | wc -l) == 10 ]] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL /orders default is not 10 rows"; }
[[ $(curl -s "$B/orders?limit=1000" | grep -o '"id":' | wc -l) == 1000 ]] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL /orders?limit=1000 is not 1000 rows"; }
check 200 GET "/orders?limit=1" '' '' '^\[\{"id":1,[^]]*\}\]$'
check 400 GET "/orders?limit=0"
check 400 GET "/orders?limit=1001"
check 400 GET "/orders?limit=-1"
check 400 GET "/orders?limit=abc"
check 400 GET "/orders?limit="
check 400 GET "/orders?limit=1e2"
# anything else
check 404 GET /nope '' '' '"error":"not_found"'

echo "$pass passed, $fail failed"
((fail == 0))
