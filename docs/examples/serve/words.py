#!/usr/bin/env python3
"""A `cairnq worker --serve` program: one JSON line per task on stdin, one
answer line per task on stdout. It runs for many tasks, so what it loads or
counts stays between them."""
import json
import sys

served = 0  # kept from task to task


def answer(message):
    print(json.dumps(message), flush=True)  # one line, flushed at once


for line in sys.stdin:  # ends when the worker closes stdin at shutdown
    task = json.loads(line)
    if task.get("cancel"):
        continue  # every task here is answered at once: nothing to stop
    served += 1
    text = task["payload"].get("text") if isinstance(task["payload"], dict) else None
    if text is None:
        error = {"message": "the payload has no text", "type": "BadPayload", "retryable": False}
        answer({"id": task["id"], "error": error})
        continue
    answer({"id": task["id"], "progress": 0.5, "message": "counting"})
    print(f"task {task['id']}: counting {len(text)} characters", file=sys.stderr)  # to the worker's log
    answer({"id": task["id"], "result": {"words": len(text.split()), "served": served}})
