-- cairnq_task_keys is keyed by key; nothing indexes task_id, so finding the
-- key of a task (the dashboard shows it) reads the whole key table, and so
-- does every purged row (the `on delete cascade` looks its keys up by
-- task_id). This index makes both one seek. Like ext_0003, an extra index
-- changes no column, row or statement meaning; writers of keyed tasks keep
-- it (one more entry per keyed submit).
create index if not exists cairnq_ext_task_keys_task_idx on cairnq_task_keys (task_id);
