module lockstep.dev/bugs/locks-2

go 1.22
