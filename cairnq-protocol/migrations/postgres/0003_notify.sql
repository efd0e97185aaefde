-- Push wakeups: cairnq_queued carries the queue name of a row that became
-- queued; cairnq_done carries the id of a row that became terminal. Rows
-- becoming running notify nobody. Listeners only cut sleeps short.
create or replace function cairnq_notify() returns trigger
language plpgsql as $body$
begin
    if new.status = 'queued' and (tg_op = 'INSERT' or old.status is distinct from 'queued') then
        perform pg_notify('cairnq_queued', new.queue);
    elsif new.status in ('succeeded', 'failed', 'canceled')
        and (tg_op = 'INSERT' or old.status not in ('succeeded', 'failed', 'canceled')) then
        perform pg_notify('cairnq_done', new.id);
    end if;
    return null;
end;
$body$;

drop trigger if exists cairnq_tasks_notify on cairnq_tasks;
create trigger cairnq_tasks_notify
    after insert or update of status on cairnq_tasks
    for each row execute function cairnq_notify();
