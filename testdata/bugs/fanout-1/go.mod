module lockstep.dev/bugs/fanout-1

go 1.22
