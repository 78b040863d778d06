-- When a run last made progress: a RUNNING pull silent for an hour was left
-- by a stopped process and may be resumed.
ALTER TABLE recon_runs ADD COLUMN updated_at BIGINT NULL;
