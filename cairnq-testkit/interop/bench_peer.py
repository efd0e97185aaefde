"""The Python reference SDK (cairnq==0.15.1) run through the same benchmark
workloads as `cairnq-bench`, so `cargo xtask bench --peers` prints ratios
measured in the same run on the same machine.

Usage: bench_peer.py <workload> <database> <size...>
  database: a SQLite path, or a Postgres DSN followed by `#schema=NAME`.
Prints one JSON line per measurement, in cairnq-bench's format.
"""

import asyncio
import json
import sys
import time

import pin_protocol  # noqa: F401  (before cairnq: see its docstring)
import cairnq

from peer import open_store


def emit(workload, backend, metric, value, detail):
    print(json.dumps({"workload": workload, "backend": backend, "metric": metric, "value": value, "detail": detail}))


async def sequential_submit(store, n):
    client = cairnq.CairnQ(store)
    start = time.perf_counter()
    for i in range(n):
        await client.submit("noop", {"i": i})
    return n / (time.perf_counter() - start)


async def concurrent_producers(store, producers, each):
    client = cairnq.CairnQ(store)

    async def produce(p):
        for i in range(each):
            await client.submit("noop", {"p": p, "i": i})

    start = time.perf_counter()
    await asyncio.gather(*(produce(p) for p in range(producers)))
    return producers * each / (time.perf_counter() - start)


async def succeeded(client):
    stats = await client.stats("default")
    return stats.get("default", {}).get("succeeded", 0)


async def burn_down(store, n, concurrency):
    client = cairnq.CairnQ(store)
    for chunk in range(0, n, 500):
        await asyncio.gather(*(client.submit("noop", {}) for _ in range(min(500, n - chunk))))
    worker = cairnq.Worker(store, ["default"], concurrency=concurrency)
    calls = [0]

    @worker.task("noop")
    async def noop(ctx, payload):
        calls[0] += 1
        return None

    # As in cairnq-bench: the handler count says when to look at the store,
    # so the harness does not compete with the worker while it drains.
    start = time.perf_counter()
    runner = asyncio.create_task(worker.run())
    while calls[0] < n:
        await asyncio.sleep(0.001)
    while await succeeded(client) < n:
        await asyncio.sleep(0.01)
    rate = n / (time.perf_counter() - start)
    worker.stop()
    await runner
    return rate


async def call_in_process(store, calls):
    worker = cairnq.Worker(store, ["default"], concurrency=1)

    @worker.task("noop")
    async def noop(ctx, payload):
        return None

    runner = asyncio.create_task(worker.run())
    client = cairnq.CairnQ(store)
    samples = []
    for i in range(calls):
        start = time.perf_counter()
        await client.call("noop", {"i": i}, timeout_ms=30000)
        samples.append((time.perf_counter() - start) * 1000)
    worker.stop()
    await runner
    samples.sort()
    return samples[round((len(samples) - 1) * 0.5)], samples[round((len(samples) - 1) * 0.95)]


async def main(workload, database, *sizes):
    backend = "postgres" if database.startswith("postgres") else "sqlite"
    store = open_store(database)
    await store.connect()
    sizes = [int(s) for s in sizes]
    try:
        if workload == "sequential_submit":
            emit(workload, backend, "tasks_per_s", await sequential_submit(store, *sizes), f"{sizes[0]} submits")
        elif workload == "concurrent_producers":
            emit(workload, backend, "tasks_per_s", await concurrent_producers(store, *sizes), f"{sizes[0]} x {sizes[1]}")
        elif workload.startswith("burn_down_c"):
            concurrency = int(workload[len("burn_down_c"):])
            rate = await burn_down(store, sizes[0], concurrency)
            emit(workload, backend, "tasks_per_s", rate, f"{sizes[0]} no-op tasks, concurrency {concurrency}")
        elif workload == "call_in_process":
            p50, p95 = await call_in_process(store, *sizes)
            emit(workload, backend, "p50_ms", p50, f"{sizes[0]} calls")
            emit(workload, backend, "p95_ms", p95, f"{sizes[0]} calls")
        else:
            raise SystemExit(f"no peer workload {workload}")
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
