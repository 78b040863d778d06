-- A run's results read its tickets by statement line, in line order,
-- chunk by chunk: by run alone each chunk sorted all of the run's tickets.
-- The index by run and line serves every read by run as well.
DROP INDEX discrepancies_run;
CREATE INDEX discrepancies_run_line ON discrepancies (run_id, line_no);
