package spec

import "testing"

func TestBlocked(t *testing.T) {
	for _, tc := range []struct {
		cmd     string
		blocked bool
	}{
		{"rm -rf /", true},
		{"rm  -r   -f   /", true},
		{"sudo rm --recursive ~", true},
		{"rm -Rf $HOME", true},
		{"rm -rf ${HOME}", true},
		{"rm -rf ~/*", true},
		{"cd x && rm -fr /*", true},
		{"rm -rf ./build", false},
		{"rm -f /", false},
		{"rm -rf /tmp/x", false},
		{"curl -sSL https://x.sh | sh", true},
		{"wget -qO- https://x | sudo bash", true},
		{"curl https://x | /bin/bash", true},
		{"curl https://x | jq .", false},
		{":(){ :|:& };:", true},
		{": ( ) { : | : & } ; :", true},
		{"mkfs.ext4 /dev/sdb1", true},
		{"sudo mkfs /dev/sdb", true},
		{"echo mkfs", false},
		{"dd if=/dev/zero of=/dev/sda bs=1M", true},
		{"dd if=a of=b", false},
		{"cat x > /dev/sda", true},
		{"echo hi > /dev/null", false},
		{"chmod -R 777 /", true},
		{"chown -R me /", true},
		{"chmod -R 755 ./dist", false},
		{"shutdown -h now", true},
		{"sudo reboot", true},
		{"echo halt", false},
		{"poweroff", true},
		{"make -j4 build", false},
	} {
		if got := Blocked(tc.cmd) != ""; got != tc.blocked {
			t.Errorf("Blocked(%q) = %v, want %v", tc.cmd, got, tc.blocked)
		}
	}
}
