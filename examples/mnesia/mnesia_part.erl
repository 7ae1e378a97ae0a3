%% mnesia_part: a Mnesia table replicated on two nodes, written by a client
%% through both, and checked after the faults heal (see README.md).
%%   first:  starts Mnesia, creates table kv (ram_copies on itself), waits.
%%   second FIRST: joins FIRST's Mnesia cluster, adds a copy of kv, waits.
%%   client A B N: waits until kv has a copy on A and B, then writes N
%%     records one a second, alternating between A and B (each write a
%%     transaction run on that node, given 5 s); when the writes are done it
%%     asks A to reach B again, waits for both to list each other as running,
%%     and reads every record on both. It halts with 0 if both nodes hold
%%     every acknowledged write and agree on every record, 1 otherwise.
-module(mnesia_part).
-export([main/1, put/2]).

-record(kv, {k, v}).

main(["first"]) ->
    ok = mnesia:start(),
    {atomic, ok} = mnesia:create_table(kv, [{ram_copies, [node()]},
                                            {attributes, record_info(fields, kv)}]),
    io:format("first ready~n"),
    receive stop -> ok end;
main(["second", First]) ->
    F = list_to_atom(First),
    retry(fun() -> net_kernel:connect_node(F) =:= true end, 1000, {no_connection, F}),
    ok = mnesia:start(),
    retry(fun() -> mnesia:change_config(extra_db_nodes, [F]) =:= {ok, [F]} end, 1000, {no_join, F}),
    retry(fun() -> has_table() end, 1000, no_table),
    retry(fun() -> add_copy() end, 1000, no_copy),
    io:format("second ready~n"),
    receive stop -> ok end;
main(["client", A0, B0, N0]) ->
    A = list_to_atom(A0),
    B = list_to_atom(B0),
    N = list_to_integer(N0),
    retry(fun() -> replicated(A, B) end, 3000, not_replicated),
    io:format("replicated on ~p and ~p~n", [A, B]),
    Acked = lists:filtermap(fun(I) -> write(I, [A, B]) end, lists:seq(1, N)),
    io:format("acknowledged ~b of ~b~n", [length(Acked), N]),
    retry(fun() -> rejoined(A, B) end, 600, not_rejoined),
    check(A, B, N, Acked).

retry(_, 0, Why) -> fail(Why);
retry(F, Tries, Why) ->
    case catch F() of
        true -> ok;
        _ -> timer:sleep(100), retry(F, Tries - 1, Why)
    end.

has_table() ->
    lists:member(kv, mnesia:system_info(tables)).

add_copy() ->
    case mnesia:add_table_copy(kv, node(), ram_copies) of
        {atomic, ok} -> true;
        {aborted, {already_exists, kv, _}} -> true;
        _ -> false
    end.

replicated(A, B) ->
    pong = net_adm:ping(A),
    pong = net_adm:ping(B),
    Copies = rpc:call(A, mnesia, table_info, [kv, active_replicas], 5000),
    lists:sort(Copies) =:= lists:sort([A, B]).

%% Write I through one of the two nodes; an unanswered or aborted write is
%% unavailability, not an error, and is not counted as acknowledged.
write(I, Nodes) ->
    Node = lists:nth(1 + I rem length(Nodes), Nodes),
    R = rpc:call(Node, ?MODULE, put, [I, {value, I}], 5000),
    timer:sleep(1000),
    case R of
        {atomic, ok} -> {true, I};
        Other -> io:format("write ~b through ~p: ~p~n", [I, Node, Other]), false
    end.

put(K, V) ->
    mnesia:transaction(fun() -> mnesia:write(#kv{k = K, v = V}) end).

%% After the faults heal both nodes must run Mnesia together again.
rejoined(A, B) ->
    pong = rpc:call(A, net_adm, ping, [B], 5000),
    RA = rpc:call(A, mnesia, system_info, [running_db_nodes], 5000),
    RB = rpc:call(B, mnesia, system_info, [running_db_nodes], 5000),
    lists:member(B, RA) andalso lists:member(A, RB).

check(A, B, N, Acked) ->
    Diffs = [{K, VA, VB} || K <- lists:seq(1, N),
                            VA <- [read(A, K)], VB <- [read(B, K)], VA =/= VB],
    Lost = [{K, Node} || K <- Acked, Node <- [A, B], read(Node, K) =:= []],
    case {Diffs, Lost} of
        {[], []} -> io:format("ok ~b~n", [length(Acked)]), halt(0);
        _ -> fail({diverged, Diffs, lost, Lost})
    end.

read(Node, K) ->
    rpc:call(Node, mnesia, dirty_read, [kv, K], 5000).

fail(Why) ->
    io:format(standard_error, "failed: ~p~n", [Why]),
    halt(1).
