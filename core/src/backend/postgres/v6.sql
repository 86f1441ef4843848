-- Schema version 6: which functions are installed (functions.sql): the hash
-- of their text and the fencing version that wrote them. A build whose
-- functions differ reinstalls them, once, under the migration lock; an older
-- build never replaces a newer one's. Every role may read it, as it may read
-- the migrations, so a role without rights on the tables can tell whether
-- the functions it needs are in place.
CREATE TABLE @schema@.installed_functions (
    id      boolean PRIMARY KEY DEFAULT true CHECK (id),
    hash    text NOT NULL,
    version text NOT NULL
);
GRANT SELECT ON @schema@.installed_functions TO PUBLIC;
