//! The shared conformance suite on the in-memory reference backend: every
//! built-in scenario and every worker-suite test, from the same code that
//! holds SQLite, Postgres and third-party backends to the protocol, one
//! fresh `MemoryStore` per scenario or test. The tests that need a second
//! process to open the same store skip themselves with a message: a memory
//! store lives in one process only.

cairnq_testkit::conformance_tests!(cairnq_testkit::memory::MemoryFactory::new());
