"""The Python reference SDK (cairnq==0.15.1 from PyPI) driven as a black box.

Cross-language tests in cairnq-testkit/tests/interop/ run this
script to make the peer create, read and settle tasks in the same database
the Rust side uses. Every command prints one JSON document on stdout.

Usage: peer.py <command> <database> [args...]
  (`surface` takes `-` as its database: it prints the SDK's public surface
  for the PARITY.md test.)
  database is a SQLite path, or a Postgres DSN (postgresql://...) optionally
  followed by ?schema=NAME handled here as the store's schema option.
"""

import asyncio
import dataclasses
import json
import re
import sqlite3
import sys
import time

import pin_protocol  # noqa: F401  (before cairnq: see its docstring)
import cairnq


def open_store(database):
    if database.startswith("postgres"):
        dsn, _, schema = database.partition("#schema=")
        kwargs = {"schema": schema} if schema else {}
        return cairnq.PostgresStore(dsn, **kwargs)
    return cairnq.SQLiteStore(database)


def task_json(task):
    return None if task is None else dataclasses.asdict(task)


def normalize_sql(sql):
    if sql is None:
        return None
    sql = re.sub(r"\s+", " ", sql.lower()).strip()
    return re.sub(r"\s*([(),])\s*", r"\1", sql)


def schema(path):
    """sqlite_master rows of the cairnq objects, whitespace-normalized, and the ledger."""
    conn = sqlite3.connect(path)
    rows = conn.execute(
        "select type, name, tbl_name, sql from sqlite_master "
        "where name like 'cairnq%' or name like 'sqlite_autoindex_cairnq%' order by type, name"
    ).fetchall()
    ledger = conn.execute("select name, applied_at_ms from cairnq_migrations order by name").fetchall()
    meta = dict(conn.execute("select key, value from cairnq_meta").fetchall())
    conn.close()
    return {
        "objects": [[t, n, tbl, normalize_sql(sql)] for t, n, tbl, sql in rows],
        "ledger": [[n, at] for n, at in ledger],
        "meta": meta,
    }


async def with_store(database, action):
    store = open_store(database)
    await store.connect()
    try:
        return await action(store)
    finally:
        await store.close()


async def submit(database, name, payload_json):
    async def act(store):
        client = cairnq.CairnQ(store)
        task = await client.submit(
            name,
            json.loads(payload_json),
            key="py-key-" + name,
            priority=7,
            delay_ms=0,
            metadata={"from": "python", "nested": {"ü": [1, 2.5, None]}},
        )
        return task_json(task)

    return await with_store(database, act)


async def submit_to(database, queue, name, payload_json):
    """Submits one unkeyed task on `queue`."""

    async def act(store):
        return task_json(await cairnq.CairnQ(store).submit(name, json.loads(payload_json), queue=queue))

    return await with_store(database, act)


async def get(database, task_id):
    return await with_store(database, lambda s: _get(s, task_id))


async def _get(store, task_id):
    return task_json(await store.get(task_id))


async def claim_complete(database, name, result_json):
    async def act(store):
        claimed = await store.claim(queues=["default"], worker_id="worker_python", lease_ms=30000, limit=1, names=[name])
        if not claimed:
            return {"claimed": None}
        done = await store.complete(task_id=claimed[0].id, worker_id="worker_python", result=json.loads(result_json))
        return {"claimed": task_json(claimed[0]), "completed": task_json(done)}

    return await with_store(database, act)


async def stats(database):
    """The peer's own stats (it counts rows), zero counts left out."""

    async def act(store):
        counts = await cairnq.CairnQ(store).stats()
        return {q: {str(getattr(s, "value", s)): n for s, n in c.items() if n} for q, c in counts.items()}

    return await with_store(database, act)


async def claim_fail(database, name, count):
    """Claims up to `count` tasks of `name` and fails each for good."""

    async def act(store):
        claimed = await store.claim(queues=["default"], worker_id="worker_python", lease_ms=30000, limit=count, names=[name])
        error = {"type": "Boom", "code": "task_error", "message": "python failed it", "retryable": False, "details": {}}
        for task in claimed:
            await store.fail(task_id=task.id, worker_id="worker_python", error=error, retryable=False)
        return {"failed": len(claimed)}

    return await with_store(database, act)


async def submit_limited(database, name, key, count):
    """Submits `count` tasks of `name` under the limit key `key`: plain
    metadata, all a producer of any SDK writes."""

    async def act(store):
        client = cairnq.CairnQ(store)
        return [task_json(await client.submit(name, {"i": i}, metadata={"limit_key": key})) for i in range(count)]

    return await with_store(database, act)


async def claim_hold(database, name, count):
    """Claims up to `count` tasks of `name` and leaves them running."""

    async def act(store):
        claimed = await store.claim(queues=["default"], worker_id="worker_python", lease_ms=60000, limit=count, names=[name])
        return [task.id for task in claimed]

    return await with_store(database, act)


async def purge(database):
    """Purges every terminal task of the default queue, whoever settled it."""
    return await with_store(database, lambda s: s.purge(older_than_ms=0, queue="default", limit=100000))


async def run_worker(database, name, count, queue="default"):
    """Runs a Python worker whose handler `name` echoes its payload, until `count` tasks of that name are terminal."""
    store = open_store(database)
    await store.connect()
    worker = cairnq.Worker(store, [queue], concurrency=4, poll_interval_ms=50)

    @worker.task(name)
    async def echo(ctx, payload):
        return {"echo": payload, "by": "python"}

    runner = asyncio.create_task(worker.run())
    client = cairnq.CairnQ(store)
    for _ in range(600):
        stats = await client.stats(queue)
        done = sum(stats.get(queue, {}).get(s, 0) for s in ("succeeded", "failed", "canceled"))
        if done >= count:
            break
        await asyncio.sleep(0.1)
    worker.stop()
    await runner
    await store.close()
    return {"terminal": done}


async def flow_worker(database, names, count, fail_name=None):
    """Runs a Python worker with an echoing handler for each of `names`
    (comma-separated; `fail_name`, if given, fails permanently instead),
    each taking 100 ms and logging when it ran, until `count` tasks of the
    default queue are terminal. Before it starts, reads every task with
    list, get and stats (rows waiting for dependencies among them)."""
    store = open_store(database)
    await store.connect()
    client = cairnq.CairnQ(store)
    listed = await client.list(limit=1000)
    seen = [task_json(await client.get(t.id)) for t in listed]
    before = await client.stats("default")
    worker = cairnq.Worker(store, ["default"], concurrency=4, poll_interval_ms=50)
    log = []

    def handler(name):
        async def run(ctx, payload):
            started = time.time()
            await asyncio.sleep(0.1)
            log.append({"id": ctx.task_id, "name": name, "start": started, "end": time.time()})
            if name == fail_name:
                raise cairnq.TaskError("python failed it", retryable=False)
            return {"by": "python", "name": name, "payload": payload}
        return run

    for name in names.split(","):
        worker.task(name)(handler(name))
    runner = asyncio.create_task(worker.run())
    done = 0
    for _ in range(600):
        stats = await client.stats("default")
        done = sum(stats.get("default", {}).get(s, 0) for s in ("succeeded", "failed", "canceled"))
        if done >= count:
            break
        await asyncio.sleep(0.1)
    worker.stop()
    await runner
    await store.close()
    return {"terminal": done, "log": log, "listed": len(seen), "stats_before": before}


async def submit_many(database, name, count):
    async def act(store):
        client = cairnq.CairnQ(store)
        ids = []
        for i in range(count):
            ids.append((await client.submit(name, {"n": i, "text": "héllo"})).id)
        return ids

    return await with_store(database, act)


async def submit_odd(database, name):
    """Rows the Python SDK writes through its normal API that are odd for a
    typed reader: a REAL priority and a payload holding a lone surrogate."""

    async def act(store):
        client = cairnq.CairnQ(store)
        real = await client.submit(name, {"n": "real priority"}, priority=1.5)
        surrogate = await client.submit(name, {"s": "a\ud800b"})
        return {"real_priority": real.id, "surrogate": surrogate.id}

    return await with_store(database, act)


async def submit_docs(database, docs_file):
    """Submits one task per JSON document (a line of docs_file): the
    document as payload and under metadata key "m". Returns the ids."""

    async def act(store):
        client = cairnq.CairnQ(store)
        ids = []
        for line in open(docs_file, encoding="utf-8"):
            doc = json.loads(line)
            ids.append((await client.submit("doc", doc, metadata={"m": doc})).id)
        return ids

    return await with_store(database, act)


async def read_docs(database, ids_file):
    """For each id (a line of ids_file): the task's payload, metadata, result
    and error as JSON text, so numbers reach the caller exactly."""

    def text(value):
        return None if value is None else json.dumps(value)

    async def act(store):
        rows = []
        for line in open(ids_file, encoding="utf-8"):
            task = await store.get(line.strip())
            rows.append([text(task.payload), text(task.metadata), text(task.result), text(task.error)])
        return rows

    return await with_store(database, act)


async def echo_docs(database, count):
    """Claims `count` tasks named doc and completes each with its own payload
    (decoded and encoded again by Python)."""

    async def act(store):
        done = 0
        while done < int(count):
            claimed = await store.claim(queues=["default"], worker_id="worker_python", lease_ms=30000, limit=50, names=["doc"])
            for task in claimed:
                await store.complete(task_id=task.id, worker_id="worker_python", result=task.payload)
            done += len(claimed)
        return {"completed": done}

    return await with_store(database, act)


class ReportingResolutions:
    """The store, forwarded whole, except that every change in what
    `get_status_by_key` (the probe the SDK's `wait_by_key` polls) resolves to
    is printed at once as a `{"resolved": id or null}` line. The test reads
    these lines to know, not guess, that the wait is under way and which
    task it has seen, before it changes the key."""

    def __init__(self, store):
        self._store = store
        self._last = ()

    def __getattr__(self, name):
        return getattr(self._store, name)

    async def get_status_by_key(self, key):
        ref = await self._store.get_status_by_key(key)
        resolved = None if ref is None else ref.id
        if resolved != self._last:
            self._last = resolved
            print(json.dumps({"resolved": resolved}), flush=True)
        return ref


async def wait_key(database, key, timeout_ms):
    """Waits for whatever task `key` points at (re-resolved on every poll),
    reporting each resolution as it changes (see ReportingResolutions)."""

    async def act(store):
        client = cairnq.CairnQ(ReportingResolutions(store))
        task = await client.wait_by_key(key, timeout_ms=int(timeout_ms), poll_ms=20, max_poll_ms=100)
        return task_json(task)

    return await with_store(database, act)


async def submit_keyed(database, name, key, conflict, payload_json):
    """Submits `name` under `key` with the given conflict strategy."""

    async def act(store):
        task = await cairnq.CairnQ(store).submit(name, json.loads(payload_json), key=key, conflict=conflict)
        return task_json(task)

    return await with_store(database, act)


async def complete_key(database, key, result_json):
    """Claims the task `key` points at (as worker_python) and completes it."""

    async def act(store):
        task = await store.get_by_key(key)
        for _ in range(100):
            claimed = await store.claim(queues=[task.queue], worker_id="worker_python", lease_ms=30000, limit=50, names=[task.name])
            if any(t.id == task.id for t in claimed):
                done = await store.complete(task_id=task.id, worker_id="worker_python", result=json.loads(result_json))
                return task_json(done)
            await asyncio.sleep(0.05)
        raise SystemExit(f"could not claim {task.id}")

    return await with_store(database, act)


def error_members(cls):
    """An error class's public surface: its constructor parameters, the
    public attributes an instance carries (set in __init__, so only an
    instance shows them: one is built with None for every required
    argument), and the public methods and properties it adds to
    BaseException's."""
    import inspect

    params = inspect.signature(cls.__init__).parameters.values()
    members = {p.name for p in params if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    required = [p for p in params if p.name != "self" and p.default is p.empty and p.kind == p.POSITIONAL_OR_KEYWORD]
    instance = cls(*[None] * len(required))
    members |= {name for name in vars(instance) if not name.startswith("_")}
    members |= {name for name in dir(cls) if not name.startswith("_") and name not in dir(BaseException)}
    return members


def public_surface():
    """The SDK's public surface, by PARITY.md section: its exported names;
    the public methods and properties of CairnQ, Worker, TaskContext and
    Task (with Task's dataclass fields); and each error's constructor
    parameters, attributes, methods and properties as Error.member."""
    exported = getattr(cairnq, "__all__", None) or [n for n in dir(cairnq) if not n.startswith("_")]
    surface = {"Exports": sorted(exported)}
    for cls in ("CairnQ", "Worker", "TaskContext", "Task"):
        members = {m for m in dir(getattr(cairnq, cls)) if not m.startswith("_")}
        if dataclasses.is_dataclass(getattr(cairnq, cls)):
            members |= {f.name for f in dataclasses.fields(getattr(cairnq, cls))}
        surface[cls] = sorted(members)
    errors = []
    for name in exported:
        value = getattr(cairnq, name)
        if isinstance(value, type) and issubclass(value, BaseException):
            errors += [f"{name}.{member}" for member in error_members(value)]
    surface["Errors"] = sorted(errors)
    return surface


async def main(argv):
    command, database, *args = argv
    if command == "surface":
        result = public_surface()
    elif command == "create":
        result = await with_store(database, lambda s: asyncio.sleep(0, result={"ok": True}))
    elif command == "schema":
        result = schema(database)
    elif command == "submit":
        result = await submit(database, *args)
    elif command == "submit-to":
        result = await submit_to(database, *args)
    elif command == "get":
        result = await get(database, *args)
    elif command == "claim-complete":
        result = await claim_complete(database, *args)
    elif command == "worker":
        result = await run_worker(database, args[0], int(args[1]))
    elif command == "submit-docs":
        result = await submit_docs(database, *args)
    elif command == "read-docs":
        result = await read_docs(database, *args)
    elif command == "echo-docs":
        result = await echo_docs(database, *args)
    elif command == "wait-key":
        result = await wait_key(database, *args)
    elif command == "submit-keyed":
        result = await submit_keyed(database, *args)
    elif command == "complete-key":
        result = await complete_key(database, *args)
    elif command == "submit-odd":
        result = await submit_odd(database, *args)
    elif command == "stats":
        result = await stats(database)
    elif command == "claim-fail":
        result = await claim_fail(database, args[0], int(args[1]))
    elif command == "purge":
        result = await purge(database)
    elif command == "submit-limited":
        result = await submit_limited(database, args[0], args[1], int(args[2]))
    elif command == "claim-hold":
        result = await claim_hold(database, args[0], int(args[1]))
    elif command == "flow-worker":
        result = await flow_worker(database, args[0], int(args[1]), args[2] if len(args) > 2 else None)
    elif command == "submit-many":
        result = await submit_many(database, args[0], int(args[1]))
    else:
        raise SystemExit(f"unknown command {command}")
    print(json.dumps(result))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
