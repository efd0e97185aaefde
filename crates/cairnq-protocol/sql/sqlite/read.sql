-- Read-only client statements. Optional filters are `-- when:` lines so the
-- rendered statement names only the columns a caller filters on, and the
-- planner can pick the index for exactly those.

-- name: list_tasks
select * from cairnq_tasks
where 1 = 1
  and status = :status -- when: status
  and queue = :queue -- when: queue
  and name = :name -- when: name
  and root_id = :root_id -- when: root_id
  and correlation_id = :correlation_id -- when: correlation_id
order by created_at_ms desc, id desc
limit :limit offset :offset
