-- list() orders by (created_at_ms desc, id desc); without an index in that
-- order, its first page sorts the whole table and a keyset page reads every
-- newer row, so both grow with the table. This index lets either read one
-- page's worth of entries. An extra index on a shared table changes no
-- column, row or statement meaning: another SDK's statements simply may use
-- it too, and every writer keeps it (the cost: one more index per insert).
create index if not exists cairnq_ext_tasks_created_idx on cairnq_tasks (created_at_ms, id);
