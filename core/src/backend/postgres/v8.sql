-- Schema version 8: the server history the store last issued under
-- (docs/semantics.md, "Failover"): the system identifier of the cluster and
-- the timeline of its WAL. A store that finds itself on another one (a
-- promoted standby, a point-in-time recovery, a restore into a new cluster)
-- takes the failover step by itself before it issues or accepts anything.
-- Recorded here for a store from before, as it stands: its copies taken
-- later are the ones that must step.
ALTER TABLE @schema@.history ADD COLUMN system_id bigint, ADD COLUMN timeline bigint;
UPDATE @schema@.history
   SET system_id = (pg_control_system()).system_identifier,
       timeline = ('x' || substr(pg_walfile_name(pg_current_wal_insert_lsn()), 1, 8))::bit(32)::bigint
 WHERE NOT pg_is_in_recovery();
