"""The Python reference SDK (cairnq==0.15.1) as a producer through a
transaction-mode pooler (PgBouncer `pool_mode = transaction`), for
cairnq-rs's pooler tests (issue 29).

Given a DSN, the SDK makes its own asyncpg pool, and asyncpg names and
caches a prepared statement per query on each connection. Through a
transaction pooler consecutive queries land on different server
connections, so that fails as soon as the pooler's connections have been
used once: `prepared statement "__asyncpg_stmt_1__" already exists` (or
"does not exist"). Its `schema=` is a startup parameter PgBouncer refuses.
The SDK takes a connection layer of the caller's instead (`PgExecutor`, its
public protocol): here an asyncpg pool with `statement_cache_size=0`, the
setting asyncpg gives for PgBouncer, so every query is an unnamed
statement, parsed and run within one exchange. Everything else is the
SDK's own: its migrations check, its SQL, its `CairnQ.submit`.

Usage: pooled_producer.py <dsn> <name> <count> <in_flight>
  submits <count> tasks named <name> (payload {"n": i}), <in_flight> at a
  time, and prints their ids as one JSON list.
"""

import asyncio
import contextlib
import json
import sys

import pin_protocol  # noqa: F401  (before cairnq: see its docstring)
import asyncpg
import cairnq


class OnOneConnection:
    """Statements on one connection (a transaction's) or on whichever
    connection the pool hands out (everything else)."""

    def __init__(self, target):
        self.target = target

    async def query(self, text, values):
        return await self.target.fetch(text, *values)

    async def execute(self, sql):
        # Without arguments asyncpg uses the simple query protocol, which
        # migration scripts of several statements need.
        await self.target.execute(sql)


class PoolerExecutor(OnOneConnection):
    """cairnq's PgExecutor over an asyncpg pool that prepares no named
    statements. No `listen`: LISTEN cannot work through a transaction
    pooler, and the SDK then polls (a producer does not wait anyway)."""

    def __init__(self, pool):
        super().__init__(pool)
        self.pool = pool

    @contextlib.asynccontextmanager
    async def transaction(self):
        async with self.pool.acquire() as connection:
            async with connection.transaction():
                yield OnOneConnection(connection)

    async def close(self):
        await self.pool.close()


async def produce(dsn, name, count, in_flight):
    pool = await asyncpg.create_pool(dsn, min_size=1, max_size=in_flight, statement_cache_size=0)
    executor = PoolerExecutor(pool)
    store = cairnq.PostgresStore(executor)
    try:
        await store.connect()
        client = cairnq.CairnQ(store)
        gate = asyncio.Semaphore(in_flight)

        async def one(n):
            async with gate:
                return (await client.submit(name, {"n": n})).id

        return await asyncio.gather(*(one(n) for n in range(count)))
    finally:
        await store.close()
        # The store never closes a caller's executor.
        await executor.close()


if __name__ == "__main__":
    dsn, name, count, in_flight = sys.argv[1:]
    ids = asyncio.run(produce(dsn, name, int(count), int(in_flight)))
    print(json.dumps(ids))
