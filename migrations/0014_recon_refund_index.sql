-- Only refund rows name a refund: payment rows (nearly all of a statement)
-- no longer enter this index while a statement is staged. Queries that
-- look a refund up by `refund_no = …` imply `refund_no IS NOT NULL`, so
-- SQLite and PostgreSQL both still use it.
DROP INDEX recon_rows_refund;
CREATE INDEX recon_rows_refund ON recon_rows (run_id, refund_no) WHERE refund_no IS NOT NULL;
