-- The workspace catalog (dataexec.Catalog, CatalogWriter and
-- ConnectionWriter): the dashboards, charts, datasets and connections the
-- reference server serves, kept across restarts and shared by every
-- process on the database.
--
-- doc is the whole entity as package dataexec encodes it, so a field
-- added to a dataexec type later is kept with no migration. It is json,
-- not jsonb: a dataset's output fields are an object whose key order is
-- the field order, and jsonb reorders keys. The other columns repeat what
-- search, joins and keys need; every write sets them from the same value
-- as doc.
CREATE TABLE catalog_entities (
    type          text NOT NULL CHECK (type IN ('dashboard', 'chart', 'dataset', 'connection')),
    id            text COLLATE "C" NOT NULL,
    team_id       text NOT NULL,
    project_id    text NOT NULL, -- '' for a team-wide connection
    name          text NOT NULL,
    updated_at    timestamptz NOT NULL,
    dashboard_id  text COLLATE "C" NOT NULL DEFAULT '', -- a chart's dashboard, '' for a preview
    connection_id text COLLATE "C" NOT NULL DEFAULT '', -- a dataset's connection
    doc           json NOT NULL,
    PRIMARY KEY (type, id)
);
CREATE INDEX catalog_entities_recent ON catalog_entities (team_id, updated_at DESC, id);
CREATE INDEX catalog_entities_charts ON catalog_entities (dashboard_id) WHERE type = 'chart';

-- Seeds applied once (the reference server's demo workspace): the first
-- process to insert a name seeds it, in the same transaction.
CREATE TABLE catalog_seeds (
    name      text PRIMARY KEY,
    seeded_at timestamptz NOT NULL DEFAULT now()
);
