#!/bin/sh
# node.sh DIR ID ADDR1 ADDR2 ADDR3: member ID (1 to 3) of a three-member
# ZooKeeper 3.8 ensemble (Debian's zookeeper package), keeping its zoo.cfg,
# myid and data in DIR (the node's {{tmp}}: a restarted member would find
# its transaction log and snapshots as it left them). It runs the server's
# JVM as zkServer.sh start-foreground does, with the package's own
# classpath (zkEnv.sh), but directly and with fewer JVM threads: a serial
# collector, the client compiler only, no perf-data file, no JMX agent.
# slf4j-simple (from libslf4j-java, which the package depends on) gives the
# server's log on stderr, DIR/../NAME.err, each line stamped with the
# milliseconds since the JVM started (virtual under lockstep); without it
# ZooKeeper logs nothing.
set -eu
dir=$1 id=$2
shift 2
mkdir -p "$dir/data"
echo "$id" >"$dir/data/myid"
# tickTime 200 ms: sessions of 0.4 to 4 s, a follower must sync within
# initLimit (2 s) and answer the leader within syncLimit (2 s); these are
# virtual seconds under lockstep. No admin server (a Jetty on 8080); the
# four-letter word srvr answers "not currently serving" until the member
# has joined a quorum, which the client polls.
cat >"$dir/zoo.cfg" <<CFG
tickTime=200
initLimit=10
syncLimit=10
dataDir=$dir/data
clientPort=2181
admin.enableServer=false
4lw.commands.whitelist=srvr,ruok
CFG
n=1
for addr in "$@"; do
	echo "server.$n=$addr:2888:3888" >>"$dir/zoo.cfg"
	n=$((n + 1))
done
if [ "${ZK_START:-}" = script ]; then
	# As a host starts it: the package's own start script, which runs the
	# JVM in the background (nohup … &), writes its pid file and its output
	# under /var/log/zookeeper, checks a second later that it runs, and
	# returns (spec-start.yaml: init: true, private_dirs).
	export JMXDISABLE=true
	exec /usr/share/zookeeper/bin/zkServer.sh start "$dir/zoo.cfg"
fi
. /usr/share/zookeeper/bin/zkEnv.sh
log=
[ -r /usr/share/java/slf4j-simple.jar ] && log=:/usr/share/java/slf4j-simple.jar
exec "$JAVA" -XX:+UseSerialGC -XX:-UsePerfData -XX:TieredStopAtLevel=1 -XX:-UseDynamicNumberOfCompilerThreads -Xshare:auto -Xmx256m \
	-Dzookeeper.log.dir="$dir" -Dorg.slf4j.simpleLogger.showDateTime=true \
	-cp "$CLASSPATH$log" org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg"
