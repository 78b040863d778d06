-- A bulk close may be undone for a short while after it ends: the job that
-- reopens its tickets, written on the close job once (a second undo finds
-- it set and is refused).
ALTER TABLE bulk_jobs ADD COLUMN undone_by TEXT NULL;
