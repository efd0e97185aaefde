#!/bin/sh
# A `cairnq worker --serve` program in POSIX sh: each task's payload comes
# back as its result. The worker writes "id" first and "payload" last.
while IFS= read -r line; do
  id=${line#*'"id":"'}; id=${id%%'"'*}
  case $line in *'"cancel":true'*) continue ;; esac
  payload=${line#*'"payload":'}; payload=${payload%'}'}
  printf '{"id":"%s","result":{"echo":%s}}\n' "$id" "$payload"
done
