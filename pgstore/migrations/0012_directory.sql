-- The reference server's team directory (a host has its own): members
-- with their roles and projects, and the projects of each team. Read live
-- on every access decision, so a change made by any process is seen by
-- every instance at once.
CREATE TABLE team_projects (
    team_id    text NOT NULL,
    project_id text NOT NULL,
    PRIMARY KEY (team_id, project_id)
);
CREATE TABLE team_members (
    team_id      text NOT NULL,
    user_id      text NOT NULL,
    role         text NOT NULL,
    all_projects boolean NOT NULL,
    project_ids  text[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (team_id, user_id)
);
