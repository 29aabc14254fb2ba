package io.heartgate.scheduler.proxy.policy;

import java.util.Map;
import java.util.TreeMap;

/** Headers over a plain case-insensitive map, for policy tests. */
final class MapHeaders implements Headers {

    final Map<String, String> map = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);

    static MapHeaders of(String... namesAndValues) {
        MapHeaders h = new MapHeaders();
        for (int i = 0; i < namesAndValues.length; i += 2) {
            h.map.put(namesAndValues[i], namesAndValues[i + 1]);
        }
        return h;
    }

    @Override
    public String get(CharSequence name) {
        return map.get(name.toString());
    }

    @Override
    public boolean contains(CharSequence name) {
        return map.containsKey(name.toString());
    }

    @Override
    public void set(CharSequence name, String value) {
        map.put(name.toString(), value);
    }

    @Override
    public void remove(CharSequence name) {
        map.remove(name.toString());
    }
}
