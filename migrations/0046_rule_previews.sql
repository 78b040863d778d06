-- A proposed change of the matching rules carries its preview: each
-- provider's latest statement run again under the rules in force and under
-- the proposed ones, writing nothing (JSON, NULL when the change touches no
-- matching rule). The approvers see what the change would do before it
-- counts.
ALTER TABLE config_versions ADD COLUMN preview_json TEXT NULL;
