-- eddy.* settings: defaults, valid values, and the errors for invalid ones
SHOW eddy.enabled;
SHOW eddy.reopt_frequency;
SHOW eddy.routing_policy;
SHOW eddy.lottery_window;
SHOW eddy.selection_min_cost;

SET eddy.reopt_frequency = 1;
SHOW eddy.reopt_frequency;
SET eddy.reopt_frequency = 0;
SET eddy.reopt_frequency = -5;
SET eddy.reopt_frequency = 'often';
RESET eddy.reopt_frequency;

SET eddy.routing_policy = lottery;
SHOW eddy.routing_policy;
SET eddy.routing_policy = fixed;
SET eddy.routing_policy = random;
SET eddy.routing_policy = 'RANK';
SHOW eddy.routing_policy;
SET eddy.routing_policy = fastest;
SET eddy.routing_policy = cumulative;
SHOW eddy.routing_policy;
RESET eddy.routing_policy;

-- eddy.routing_hold: relation=percent, 0 .. 100
SET eddy.routing_hold = 'orders=50, lineitem = 100';
SHOW eddy.routing_hold;
SET eddy.routing_hold = 'x=abc';
SET eddy.routing_hold = 'x=101';
SET eddy.routing_hold = 'x';
RESET eddy.routing_hold;

SET eddy.lottery_window = 1000;
SET eddy.lottery_window = -1;
RESET eddy.lottery_window;

SET eddy.selection_min_cost = 0;
SET eddy.selection_min_cost = -0.5;
SET eddy.selection_min_cost = 5000;
RESET eddy.selection_min_cost;

SET eddy.enabled = off;
SHOW eddy.enabled;
SET eddy.enabled = maybe;
RESET eddy.enabled;

SHOW eddy.static_shj;
SHOW eddy.join_method;
SHOW eddy.max_sources;
SHOW eddy.max_memory;
SET eddy.join_method = index;
SET eddy.join_method = hybrid;
SET eddy.hybrid_route = index;
SET eddy.hybrid_route = sometimes;
RESET eddy.hybrid_route;
SET eddy.join_method = merge;
SET eddy.max_sources = 1;
SET eddy.max_sources = 17;
SET eddy.max_sources = 16;
SET eddy.max_memory = '64MB';
SHOW eddy.max_memory;
SET eddy.max_memory = -2;
SET eddy.max_memory = '1 parsec';
RESET eddy.join_method;
RESET eddy.max_sources;
RESET eddy.max_memory;

SHOW eddy.state_mode;
SET eddy.state_mode = stems;
SHOW eddy.state_mode;
SET eddy.state_mode = stem;
RESET eddy.state_mode;

-- the prefix is reserved: a misspelt setting is an error, not a placeholder
SET eddy.reopt_frequncy = 10;
SET eddy.no_such_setting = on;

-- every setting is listed with a description
SELECT name, setting, context, vartype
FROM pg_settings WHERE name LIKE 'eddy.%' AND name <> 'eddy.clock' ORDER BY name;
-- but the read-only clock, whose value is the machine's
SELECT name, context, vartype,
       setting = 'clock_gettime' OR setting ~ '^tsc, [0-9]+\.[0-9] MHz$' AS known
FROM pg_settings WHERE name = 'eddy.clock';
SET eddy.clock = 'clock_gettime';
