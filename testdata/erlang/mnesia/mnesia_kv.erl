%% mnesia_kv: a two-node Mnesia store, run under lockstep (see README.md).
%%   server: starts Mnesia, creates table kv (ram_copies on itself), waits.
%%   client SERVER: connects to SERVER, joins its Mnesia cluster, writes
%%   N records in transactions, reads each back on both nodes, prints
%%   "ok N" and halts with status 0 (1 on any mismatch).
-module(mnesia_kv).
-export([main/1]).

-record(kv, {k, v}).

main(["server"]) ->
    ok = mnesia:start(),
    {atomic, ok} = mnesia:create_table(kv, [{ram_copies, [node()]},
                                            {attributes, record_info(fields, kv)}]),
    io:format("server ready~n"),
    receive stop -> ok end;
main(["client", Server, N]) ->
    S = list_to_atom(Server),
    connect(S, 500),
    ok = mnesia:start(),
    join(S, 500),
    ok = wait_table(500),
    Count = list_to_integer(N),
    lists:foreach(fun(I) -> put_get(S, I) end, lists:seq(1, Count)),
    io:format("ok ~b~n", [Count]),
    halt(0).

%% The server may not be up yet: retry every 10 ms.
connect(S, 0) -> fail({no_connection, S});
connect(S, Tries) ->
    case net_kernel:connect_node(S) of
        true -> ok;
        _ -> timer:sleep(10), connect(S, Tries - 1)
    end.

%% Joining fails ({ok, []}) while the server's Mnesia is not running yet.
join(S, 0) -> fail({no_join, S});
join(S, Tries) ->
    case mnesia:change_config(extra_db_nodes, [S]) of
        {ok, [S]} -> ok;
        _ -> timer:sleep(10), join(S, Tries - 1)
    end.

%% The table exists once the server created it.
wait_table(0) -> fail(no_table);
wait_table(Tries) ->
    case catch mnesia:table_info(kv, where_to_read) of
        Node when is_atom(Node), Node =/= nowhere -> ok;
        _ -> timer:sleep(10), wait_table(Tries - 1)
    end.

put_get(S, I) ->
    V = {value, I},
    {atomic, ok} = mnesia:transaction(fun() -> mnesia:write(#kv{k = I, v = V}) end),
    {atomic, [#kv{v = V}]} = mnesia:transaction(fun() -> mnesia:read(kv, I) end),
    case rpc:call(S, mnesia, dirty_read, [kv, I]) of
        [#kv{v = V}] -> ok;
        Other -> fail({server_read, I, Other})
    end.

fail(Why) ->
    io:format(standard_error, "failed: ~p~n", [Why]),
    halt(1).
