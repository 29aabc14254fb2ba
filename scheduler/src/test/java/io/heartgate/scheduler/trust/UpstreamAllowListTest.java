package io.heartgate.scheduler.trust;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.heartgate.protocol.InvalidSettingException;
import java.net.InetAddress;
import org.junit.jupiter.api.Test;

class UpstreamAllowListTest {

    private static InetAddress ip(String literal) throws Exception {
        return InetAddress.getByName(literal); // literals only: no lookup
    }

    @Test
    void noListAllowsEverything() throws Exception {
        UpstreamAllowList all = UpstreamAllowList.parse(" ");
        assertThat(all.allowsAll()).isTrue();
        assertThat(all.allowsUrl("http://169.254.169.254/")).isTrue();
        assertThat(all.allowsResolved(ip("127.0.0.1"))).isTrue();
        assertThat(UpstreamAllowList.parse(null)).isSameAs(UpstreamAllowList.ALLOW_ALL);
    }

    @Test
    void addressesInUrlsMustBeInACidr() {
        UpstreamAllowList list = UpstreamAllowList.parse("10.0.0.0/8, 192.168.1.7, fd00::/8");
        assertThat(list.allowsUrl("http://10.1.2.3:11434")).isTrue();
        assertThat(list.allowsUrl("http://192.168.1.7:8000/v1")).isTrue();
        assertThat(list.allowsUrl("http://192.168.1.8:8000")).isFalse();
        assertThat(list.allowsUrl("http://[fd12::1]:8000")).isTrue();
        assertThat(list.allowsUrl("http://[fe80::1]:8000")).isFalse();
        assertThat(list.allowsUrl("http://169.254.169.254/latest/meta-data")).isFalse();
        assertThat(list.allowsUrl("http://127.0.0.1:11434")).isFalse();
        assertThat(list.allowsUrl("http://gpu-a.internal:11434")).as("no glob names it").isFalse();
    }

    @Test
    void prefixesThatAreNotWholeBytesAreExact() {
        UpstreamAllowList list = UpstreamAllowList.parse("172.16.0.0/12");
        assertThat(list.allowsUrl("http://172.16.0.1")).isTrue();
        assertThat(list.allowsUrl("http://172.31.255.255")).isTrue();
        assertThat(list.allowsUrl("http://172.32.0.0")).isFalse();
        assertThat(list.allowsUrl("http://172.15.255.255")).isFalse();
        assertThat(UpstreamAllowList.parse("0.0.0.0/0").allowsUrl("http://8.8.8.8")).isTrue();
    }

    @Test
    void namesMustMatchAGlobAndTheirAddressesAreCheckedAgain() throws Exception {
        UpstreamAllowList list = UpstreamAllowList.parse("*.gpu.internal,gpu-?.lan,10.0.0.0/8");
        assertThat(list.allowsUrl("http://a.gpu.internal:11434")).isTrue();
        assertThat(list.allowsUrl("http://A.GPU.Internal.:11434")).isTrue();
        assertThat(list.allowsUrl("http://gpu-1.lan")).isTrue();
        assertThat(list.allowsUrl("http://gpu-12.lan")).isFalse();
        assertThat(list.allowsUrl("http://gpu.internal.evil.example")).isFalse();
        assertThat(list.allowsUrl("http://metadata.google.internal")).isFalse();
        assertThat(list.allowsResolved(ip("10.9.9.9"))).isTrue();
        assertThat(list.allowsResolved(ip("169.254.169.254"))).isFalse();
        assertThat(list.allowsResolved(ip("127.0.0.1"))).isFalse();
    }

    @Test
    void withGlobsAloneResolvedAddressesMayNotBeLoopbackLinkLocalOrUnspecified() throws Exception {
        UpstreamAllowList list = UpstreamAllowList.parse("*.gpu.internal");
        assertThat(list.allowsResolved(ip("10.0.0.5"))).isTrue();
        for (String bad : new String[] {"127.0.0.1", "::1", "169.254.169.254", "fe80::1", "0.0.0.0", "224.0.0.1"}) {
            assertThat(list.allowsResolved(ip(bad))).as(bad).isFalse();
        }
        assertThat(list.allowsUrl("http://10.0.0.5")).as("an address needs a CIDR").isFalse();
    }

    @Test
    void aGlobStarStaysWithinOneLabel() {
        UpstreamAllowList list = UpstreamAllowList.parse("gpu-*,*.gpu.internal");
        assertThat(list.allowsUrl("http://gpu-1")).isTrue();
        assertThat(list.allowsUrl("http://gpu-1.attacker.example")).isFalse();
        assertThat(list.allowsUrl("http://a.gpu.internal")).isTrue();
        assertThat(list.allowsUrl("http://a.b.gpu.internal")).isFalse();
    }

    @Test
    void withGlobsAloneOtherCloudsMetadataAndNat64AreRefusedToo() throws Exception {
        UpstreamAllowList list = UpstreamAllowList.parse("*.gpu.internal");
        assertThat(list.globsWithoutCidrs()).isTrue();
        for (String bad : new String[] {"100.100.100.200", "168.63.129.16", "fd00:ec2::254", "64:ff9b::7f00:1",
            "0.1.2.3"}) {
            assertThat(list.allowsResolved(ip(bad))).as(bad).isFalse();
        }
        assertThat(UpstreamAllowList.parse("*.gpu.internal,10.0.0.0/8").globsWithoutCidrs()).isFalse();
    }

    @Test
    void entriesItCannotReadAreSettingErrors() {
        for (String bad : new String[] {"10.0.0.0/33", "10.0.0.0/x", "300.1.1.1/8", "http://x", "a b", "10.0.*",
            "999.1.1.1"}) {
            assertThatThrownBy(() -> UpstreamAllowList.parse(bad)).as(bad)
                    .isInstanceOfSatisfying(InvalidSettingException.class,
                            e -> assertThat(e.setting()).isEqualTo("allowUpstream"));
        }
    }
}
