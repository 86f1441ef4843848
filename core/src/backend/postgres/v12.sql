-- Schema version 12: the schema the store lives in, by OID, beside the
-- server history it records (docs/semantics.md, "Noticed without a hook").
-- A dump restored into the cluster it was taken from, on the same timeline,
-- lands in a schema made anew, with another OID, so the store takes the
-- steps by itself there too; a promoted standby or a point-in-time recovery
-- keeps the OID. Recorded here for a store from before, as it stands: its
-- copies made later are the ones that must step.
ALTER TABLE @schema@.history ADD COLUMN schema_oid bigint;
UPDATE @schema@.history SET schema_oid = '@schema@'::regnamespace::oid::bigint
 WHERE system_id IS NOT NULL;
-- Its result gained the OID (functions.sql has the new one).
DROP FUNCTION IF EXISTS @schema@.server_history();
